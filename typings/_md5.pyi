# Types for CPython's builtin MD5 module, which typeshed leaves out: fnkit/queue/_contents.py hashes short
# bodies with it (faster than OpenSSL's there). Its `md5` takes what hashlib.md5 takes and returns an
# object with the same methods (update, digest, hexdigest, copy); typed as hashlib's, so that
# `from hashlib import md5` stands in for it where the module is missing.

from _hashlib import HASH

from _typeshed import ReadableBuffer

def md5(string: ReadableBuffer = b"", *, usedforsecurity: bool = True) -> HASH: ...
