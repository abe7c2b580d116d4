"""What "looks like an email address" means for the mail source (rule MS3).

An address is an RFC 5322 addr-spec written as `dot-atom "@" dot-atom`: the local part
and the domain are runs of atext characters (letters, digits and
``!#$%&'*+/=?^_`{|}~-``, plus any non-ASCII character that is not a space, as RFC 6532
allows) joined by single dots. Quoted local parts and domain literals (``"a b"@x``,
``a@[10.0.0.1]``) are not accepted: the mail service shows addresses in their plain
form. One-label domains (``a@x``) are accepted; lengths are not checked.

The grammar is stated once, as `ADDRESS_PATTERN`: the event's shape declares it (the
validator checks every address against it) and `is_address` asks it of one string.
"""

from __future__ import annotations

import re
from typing import TypeGuard

# atext (RFC 5322, widened by RFC 6532): every character but the controls, the specials "(),.:;<>@[\] and
# whitespace (ASCII, and the non-ASCII spaces and separators, named one by one so that a regular expression
# engine of another language reads the same class); the dot joins atoms, the "@" the local part and the domain
_ATOM_CHAR = r'[^\x00-\x20"(),.:;<>@\[\\\]\x7f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]'
_DOT_ATOM = rf"{_ATOM_CHAR}+(?:\.{_ATOM_CHAR}+)*"
#: the pattern of an address, as the shape declares it (fnkit.mail._event) and JSON Schema exports it
ADDRESS_PATTERN = rf"^{_DOT_ATOM}@{_DOT_ATOM}$"
_ADDRESS = re.compile(ADDRESS_PATTERN).fullmatch  # the whole string, as the shape asks (not before a final "\n")


def is_address(text: object) -> TypeGuard[str]:
    """True when `text` is a string that looks like an email address (MS3)."""
    return isinstance(text, str) and _ADDRESS(text) is not None
