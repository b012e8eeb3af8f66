"""An audit sink in memory: Icecore's own AuditSink interface, for tests of what writes to it."""

from __future__ import annotations

from icecore.audit import AuditEvent
from icecore.errors import IcecoreError


class MemorySink:
    """An AuditSink keeping its events in a list."""

    def __init__(self) -> None:
        self.events: list[AuditEvent] = []

    def append(self, event: AuditEvent) -> None:
        self.events.append(event)

    def read(self) -> list[AuditEvent]:
        return list(self.events)


class BrokenSink(MemorySink):
    """A sink that cannot write the phase (``intent`` or ``outcome``) it is told to fail on."""

    def __init__(self, failing: str) -> None:
        super().__init__()
        self.failing = failing

    def append(self, event: AuditEvent) -> None:
        if event.phase == self.failing:
            raise IcecoreError("The audit log's disk is full.")
        super().append(event)
