"""Is a model id something litellm can route? Asked before a run, so a typo fails in words at once
instead of as an error in every trial."""

from __future__ import annotations

from corral_core.llm.client import OFFLINE_PREFIXES, _litellm


def model_problem(model_id: str) -> str | None:
    """Why litellm cannot route `model_id` (an unknown provider prefix, or a bare name it does not
    know), or None when it can. Offline models (scripted/, replay/) always can."""
    if model_id.startswith(OFFLINE_PREFIXES):
        return None
    litellm = _litellm()
    if "/" in model_id:
        prefix = model_id.split("/", 1)[0]
        if prefix not in {str(getattr(provider, "value", provider)) for provider in litellm.provider_list}:
            return (f"{prefix!r} is not a provider litellm knows (model {model_id!r}); write the model as "
                    "provider/model, e.g. openai/gpt-4o-mini, anthropic/claude-3-5-haiku-latest or ollama/llama3")
    try:
        litellm.get_llm_provider(model_id)
    except Exception:
        return (f"litellm cannot tell which provider serves {model_id!r}; name the provider, e.g. "
                f"openai/{model_id} (an OpenAI-compatible server also needs its api base)")
    return None
