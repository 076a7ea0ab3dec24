"""Rules the facade needs that the rule modules do not provide yet (to be moved or dropped).

``register(label)`` is called by ``Op.resolve`` only after every ``srcgrad.rules`` module has
been imported and the rule is still missing, so it never races a real registration.
"""
from __future__ import annotations


def register(label: str) -> None:
    """Register the interim rule of facade operation ``label``, if there is one."""
    return None
