"""Fixtures for the mail tests: small valid events."""

import pytest

from fnkit import mail

from .helpers import ALICE, BOB, CAROL


@pytest.fixture
def event():
    """An inbound event for alice, bob and carol."""
    return mail.build_event(mail_from="sender@example.org", recipients=[ALICE, BOB, CAROL], subject="Quarterly report")


@pytest.fixture
def outbound_event():
    """An outbound event for two outside recipients."""
    return mail.build_event(
        mail_from=ALICE, recipients=["x@example.net", "y@example.net"], subject="Out", flow_direction="OUTBOUND"
    )
