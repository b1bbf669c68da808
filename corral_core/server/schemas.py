"""Request bodies, documented response shapes, and the JSON response every route returns.

Routes return `SafeJSONResponse` directly: it skips FastAPI's generic encoder on the hot path, and
it never turns a strange value (a NaN argument, a non-JSON object from an environment, a lone UTF-16
surrogate) into a 500. Request bodies pass every string through `safetext.clean` as they are
validated, so what a client sends is stored, scored and echoed with lone surrogates already
replaced by U+FFFD (the policy of `corral_core.safetext`). The response models below exist for the
OpenAPI document.
"""

from __future__ import annotations

import json
import math
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr
from starlette.responses import JSONResponse

from corral_core.safetext import clean, clean_text, redact


class SafeJSONResponse(JSONResponse):
    """Compact UTF-8 JSON that never fails: non-finite floats become null, unknown objects their
    `str`, lone surrogates U+FFFD (the fallback walk runs only when the fast path fails). Every
    answer, fast path included, has each registered secret masked (`safetext.redact`)."""

    def render(self, content: Any) -> bytes:
        try:
            return redact(json.dumps(content, ensure_ascii=False, allow_nan=False, separators=(",", ":"))).encode()
        except (TypeError, ValueError):  # UnicodeEncodeError (a lone surrogate) is a ValueError
            return json.dumps(
                _safe(content), ensure_ascii=False, allow_nan=False, separators=(",", ":"), default=_text_of
            ).encode()


def _safe(value: Any) -> Any:
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {clean_text(str(k)): _safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_safe(v) for v in value]
    return value


def _text_of(value: Any) -> str:
    return clean_text(str(value))


# Every string a client sends is cleaned as it is validated (lone surrogates -> U+FFFD).
CleanStr = Annotated[StrictStr, AfterValidator(clean_text)]
CleanArguments = Annotated[dict[str, Any], AfterValidator(clean)]


# --- request bodies ------------------------------------------------------------------------------


class ToolRequest(BaseModel):
    """Body of POST .../tools/execute: both keys required, as in Corral (422 without `arguments`)."""

    tool_name: CleanStr
    arguments: CleanArguments


# What Corral E2 accepts as an answer and scores: a JSON string, number, boolean or null. A list or
# an object is a 422 here (Corral's scorers broke on them with a 500).
Answer = CleanStr | StrictInt | StrictFloat | StrictBool | None


class SubmitRequest(BaseModel):
    """Body of POST .../submit. Other keys are ignored (Corral declared the body as a bare dict)."""

    model_config = ConfigDict(extra="ignore")
    answer: Answer = Field(description="a string, number, boolean or null; the environment's scorer gets it as sent")


class TrialCreateRequest(BaseModel):
    """Optional body of POST /tasks/{task_id}/trials."""

    model_config = ConfigDict(extra="ignore")
    episode_id: CleanStr | None = Field(default=None, max_length=200)
    benchmark_id: CleanStr | None = Field(default=None, max_length=200)
    arm: CleanStr | None = Field(default=None, max_length=200)
    trial_index: int | None = None
    inputs: dict[CleanStr, CleanStr] | None = Field(
        default=None, description="upstream task id -> output, seeding the episode (a resumed chain round)")
    verbosity: CleanStr | None = Field(
        default=None, description="the documentation level the trial's MCP endpoint lists its tools at (its "
                                  "`mcp_url` says it; a `?verbosity=` on a request still wins)")
    variant: CleanStr | None = Field(
        default=None, max_length=200,
        description="the documentation variant the trial's tools are shown in (`original`, or one of the suite's "
                    "overlays: `documentation.variants`); every channel of the trial shows it")
    components: list[CleanStr] | None = Field(
        default=None, max_length=20,
        description="exactly these documentation components (brief, detailed, ...) in every channel of the trial")
    approval: Literal["reject", "ask", "approve", "auto"] | None = Field(
        default=None, description="the run's policy for confirm-level tools in this trial: applied when it is "
                                  "stricter than the server's own (reject > ask > approve), refused (409) when looser")


class ApprovalDecisionRequest(BaseModel):
    """Body of POST /approvals/{approval_id}."""

    approved: StrictBool
    reason: CleanStr = ""


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
    fault: str | None = Field(
        None, description="present, as \"environment\", only when the tool's environment failed rather than the "
                          "tool (an external server timed out, closed or was unreachable); not a Corral field")


class ToolExecuteResponse(BaseModel):
    result: ToolCallModel


class TrialCompletionResponse(BaseModel):
    score: float
    state: dict[str, Any]
    trial_id: str = Field(description="the id of the trial that just finished")
    surrendered: bool
    explanation: str | None = None
    closed: bool | None = Field(default=None, description="true when `?close=true` closed the trial runtime")


class StatusResponse(BaseModel):
    is_attempted: bool
    score: float | None
    submitted_answer: str | int | float | bool | None
    tool_statistics: dict[str, Any]
    trial_id: str


class ConfigureResponse(BaseModel):
    status: str
    task_id: str
    trial_id: str


class TrialCreatedResponse(BaseModel):
    trial_id: str
    trial_runtime_id: str = Field(description="the same id, under the name Corral E2c clients read")
    task_id: str
    workspace: str | None
    mcp_url: str = Field(description="the trial's MCP endpoint (Streamable HTTP), absolute, with the trial's "
                                     "`?verbosity=` when it was opened with one")
    prompt: str | list[dict[str, Any]] | None = Field(
        default=None, description="the task prompt, as GET /trials/{trial_id}/prompt gives it (absent when the "
                                  "environment could not give it at opening)")


class ErrorResponse(BaseModel):
    detail: Any


# FastAPI's `responses=`: extra status codes documented in the OpenAPI schema.
ResponsesDoc = dict[int | str, dict[str, Any]]

ERRORS_404: ResponsesDoc = {404: {"model": ErrorResponse, "description": "Unknown task or trial"}}
ERRORS_409: ResponsesDoc = {409: {"model": ErrorResponse, "description": "The trial already ended"}}
ERRORS_422: ResponsesDoc = {422: {"model": ErrorResponse, "description": "Invalid body or parameter"}}
