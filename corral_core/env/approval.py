"""The interface between `confirm`-risk tools and whoever decides about them.

The environment asks its `ApprovalGate` before running a `confirm` tool and blocks until the gate
answers. Gates decide by policy (batch, standalone server), through a person in the TUI, or through
a remote client (`GET /approvals`, `POST /approvals/{id}`); see `corral_core.server.approvals`.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from corral_core.constants import APPROVAL_POLICIES as APPROVAL_POLICIES  # re-exported by corral_core.env
from corral_core.domain import Decider


@dataclass(slots=True)
class ApprovalRequest:
    """A tool call waiting for a decision."""

    task_id: str
    trial_id: str | None
    tool_name: str
    arguments: dict[str, Any]
    risk: str = "confirm"
    timeout: float = 60.0
    id: str = field(default_factory=lambda: "ap_" + secrets.token_hex(6))
    created_at: float = field(default_factory=time.time)

    @property
    def deadline(self) -> float:
        return self.created_at + self.timeout

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "task_id": self.task_id,
            "trial_id": self.trial_id,
            "tool_name": self.tool_name,
            "arguments": self.arguments,
            "risk": self.risk,
            "timeout": self.timeout,
            "created_at": self.created_at,
            "deadline": self.deadline,
        }


CANCELLED = Decider.CANCELLED  # decided_by for requests a stopped run (or a quit) rejected all at once


@dataclass(slots=True)
class ApprovalDecision:
    """The answer to an `ApprovalRequest`. `decided_by` is policy, user, remote, timeout or cancelled."""

    approved: bool
    decided_by: str = Decider.POLICY
    reason: str = ""


@runtime_checkable
class ApprovalGate(Protocol):
    """Decides whether a `confirm` tool call may run. Blocks until decided (gates own the timeout)."""

    def request(self, request: ApprovalRequest) -> ApprovalDecision: ...


class RejectAll:
    """The gate an environment uses when nobody was configured to decide: reject, saying why."""

    def request(self, request: ApprovalRequest) -> ApprovalDecision:
        return ApprovalDecision(False, Decider.POLICY, "no approver is configured for confirm-level tools")


# --- policies ---------------------------------------------------------------------------------------

_STRICTNESS = {"approve": 0, "ask": 1, "reject": 2}


def policy_of(gate: object) -> str:
    """The policy `gate` applies: its `policy` attribute, else "ask" (a gate that decides case by case)."""
    policy = getattr(gate, "policy", None)
    return policy if policy in _STRICTNESS else "ask"


def is_stricter(policy: str, than: str) -> bool:
    """True when `policy` runs fewer confirm-level tools than `than` (reject > ask > approve)."""
    return _STRICTNESS[policy] > _STRICTNESS[than]


class StricterGate:
    """The gate of a trial whose client asked for a policy at least as strict as the server's own.

    Where the asked policy is the stricter one, it decides; otherwise the server's gate does (the
    server's policy may change between runs, as the workbench's does, so this is checked per call).
    """

    def __init__(self, inner: ApprovalGate, policy: str) -> None:
        if policy not in _STRICTNESS:
            raise ValueError(f"approval policy must be one of {APPROVAL_POLICIES}, not {policy!r}")
        self.inner = inner
        self.asked = policy

    @property
    def policy(self) -> str:
        own = policy_of(self.inner)
        return self.asked if is_stricter(self.asked, own) else own

    @property
    def timeout(self) -> float | None:
        return getattr(self.inner, "timeout", None)

    def request(self, request: ApprovalRequest) -> ApprovalDecision:
        if not is_stricter(self.asked, policy_of(self.inner)):
            return self.inner.request(request)
        if self.asked == "reject":
            return ApprovalDecision(False, Decider.POLICY, "rejected by the run's policy (approval: reject)")
        return ApprovalDecision(False, Decider.POLICY, "needs approval: the run's policy is `approval: ask`, and this "
                                                 "server would approve without asking anyone, so it rejects instead")
