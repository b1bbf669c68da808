"""The workbench's approval gate: one object in front of every embedded server, switched per run.

The servers start once with the app, but each run brings its own approval policy (the run form's
reject / approve / ask). `WorkbenchGate` answers by policy, or hands the request to a `QueueGate`
whose `on_request` callback tells the app (by `post_message`, which is thread-safe).
"""

from __future__ import annotations

from collections.abc import Callable

from corral_core.env.approval import ApprovalDecision, ApprovalRequest
from corral_core.server.approvals import QueueGate

POLICIES = ("ask", "approve", "reject")


class WorkbenchGate:
    """Decides confirm-level tool calls by the current run's policy (`ask` queues them for a person)."""

    def __init__(self, timeout: float, on_request: Callable[[ApprovalRequest], None] | None = None) -> None:
        self.queue = QueueGate(timeout=timeout, on_request=on_request)
        self.policy = "ask"

    @property
    def timeout(self) -> float:
        return self.queue.timeout

    def set_policy(self, policy: str) -> None:
        """Start a new run under `policy`; tools approved "for the run" need approval again."""
        if policy not in POLICIES:
            raise ValueError(f"approval policy must be one of {POLICIES}, not {policy!r}")
        self.policy = policy
        self.queue.forget_tool_approvals()

    def request(self, request: ApprovalRequest) -> ApprovalDecision:
        if self.policy == "approve":
            return ApprovalDecision(True, "policy", "approved by the run's policy (approval: approve)")
        if self.policy == "reject":
            return ApprovalDecision(False, "policy", "rejected by the run's policy (approval: reject)")
        return self.queue.request(request)

    def close(self) -> None:
        self.queue.close("the workbench is closing")
