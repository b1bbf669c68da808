"""Request bodies, documented response shapes, and the JSON response every route returns.

Routes return `SafeJSONResponse` directly: it skips FastAPI's generic encoder on the hot path, and
it never turns a strange value (a NaN argument, a non-JSON object from an environment) into a 500.
The response models below exist for the OpenAPI document.
"""

from __future__ import annotations

import json
import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr
from starlette.responses import JSONResponse


class SafeJSONResponse(JSONResponse):
    """Compact JSON; non-finite floats become null and unknown objects their `str`, never a 500."""

    def render(self, content: Any) -> bytes:
        try:
            return json.dumps(content, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()
        except (TypeError, ValueError):
            return json.dumps(
                _finite(content), ensure_ascii=False, allow_nan=False, separators=(",", ":"), default=str
            ).encode()


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_finite(v) for v in value]
    return value


# --- request bodies ------------------------------------------------------------------------------


class ToolRequest(BaseModel):
    """Body of POST .../tools/execute."""

    tool_name: StrictStr
    arguments: dict[str, Any] = Field(default_factory=dict)


class SubmitRequest(BaseModel):
    """Body of POST .../submit. Other keys are ignored (Corral declared the body as a bare dict)."""

    model_config = ConfigDict(extra="ignore")
    answer: StrictStr


class TrialCreateRequest(BaseModel):
    """Optional body of POST /tasks/{task_id}/trials."""

    model_config = ConfigDict(extra="ignore")
    episode_id: StrictStr | None = Field(default=None, max_length=200)
    benchmark_id: StrictStr | None = Field(default=None, max_length=200)
    arm: StrictStr | None = Field(default=None, max_length=200)
    trial_index: int | None = None
    inputs: dict[StrictStr, StrictStr] | None = Field(
        default=None, description="upstream task id -> output, seeding the episode (a resumed chain round)")


class ApprovalDecisionRequest(BaseModel):
    """Body of POST /approvals/{approval_id}."""

    approved: StrictBool
    reason: StrictStr = ""


# --- documented responses ----------------------------------------------------------------------


class PromptResponse(BaseModel):
    prompt: str | list[dict[str, Any]]


class ToolsResponse(BaseModel):
    tools: list[dict[str, Any]]


class McpToolsResponse(BaseModel):
    tools: list[dict[str, Any]]
    mcp_schema_sha256: str


class ToolCallModel(BaseModel):
    tool_name: str
    arguments: dict[str, Any]
    result: str | None
    status: str = Field(description="success|invalid_tool|invalid_args|execution_error|blocked|rejected|timeout")
    error_message: str | None
    duration: float
    timestamp: str
    risk: str = "safe"
    approval: str | None = None
    render: str = "text"


class ToolExecuteResponse(BaseModel):
    result: ToolCallModel


class TrialCompletionResponse(BaseModel):
    score: float
    state: dict[str, Any]
    trial_id: str = Field(description="the id of the trial that just finished")
    surrendered: bool
    explanation: str | None = None


class StatusResponse(BaseModel):
    is_attempted: bool
    score: float | None
    submitted_answer: str | None
    tool_statistics: dict[str, Any]
    trial_id: str


class ConfigureResponse(BaseModel):
    status: str
    task_id: str
    trial_id: str


class TrialCreatedResponse(BaseModel):
    trial_id: str
    task_id: str
    workspace: str | None


class ErrorResponse(BaseModel):
    detail: Any


# FastAPI's `responses=`: extra status codes documented in the OpenAPI schema.
ResponsesDoc = dict[int | str, dict[str, Any]]

ERRORS_404: ResponsesDoc = {404: {"model": ErrorResponse, "description": "Unknown task or trial"}}
ERRORS_409: ResponsesDoc = {409: {"model": ErrorResponse, "description": "The trial already ended"}}
ERRORS_422: ResponsesDoc = {422: {"model": ErrorResponse, "description": "Invalid body or parameter"}}
