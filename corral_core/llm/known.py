"""Is a model id something litellm can route? Asked before a run, so a typo fails in words at once
instead of as an error in every trial."""

from __future__ import annotations

import difflib
import os

from corral_core.llm.client import _litellm
from corral_core.llm.direct import OPENAI_PREFIX
from corral_core.llm.offline import OFFLINE_PREFIXES


def model_problem(model_id: str) -> str | None:
    """Why litellm cannot route `model_id` (an unknown provider prefix, or a bare name it does not
    know), or None when it can. Offline models (scripted/, replay/) and `openai/...` always can (the
    latter without importing litellm: a run on an OpenAI-compatible server may never need it)."""
    if model_id.startswith(OFFLINE_PREFIXES) or model_id.removeprefix(OPENAI_PREFIX) not in ("", model_id):
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


# Hosted providers whose model names litellm lists (litellm.models_by_provider): a name missing there is a
# typo far more often than a model litellm does not know yet. Elsewhere (ollama, vllm, azure deployments,
# bedrock, proxies...) names are the user's own, and only routing is checked.
CATALOGUED_PROVIDERS = frozenset({"openai", "anthropic", "gemini", "mistral", "groq", "deepseek", "xai",
                                  "perplexity", "cohere_chat"})


def unlisted_problem(model_id: str, api_base: str | None = None) -> str | None:
    """Why `model_id` looks like a typo: a catalogued provider (above) that does not list its name, with the
    nearest names it does list; None when listed, fine-tuned (`ft:`), offline, or given an `api_base` (a
    custom deployment, or on purpose: the way to run a model litellm does not list yet)."""
    if api_base or model_id.startswith(OFFLINE_PREFIXES):
        return None
    litellm = _litellm()
    try:
        name, provider, _key, _base = litellm.get_llm_provider(model_id)
    except Exception:  # model_problem says why it cannot be routed
        return None
    listed = {str(m).split("/", 1)[1] if str(m).startswith(f"{provider}/") else str(m)
              for m in litellm.models_by_provider.get(provider) or ()}
    if provider not in CATALOGUED_PROVIDERS or not listed or name in listed or name.startswith("ft:"):
        return None
    near = difflib.get_close_matches(name, sorted(listed), n=3, cutoff=0.6)
    guess = f"; did you mean {' or '.join(f'{provider}/{m}' for m in near)}?" if near else ""
    return f"{model_id!r} is not a model litellm {litellm_version()} lists for provider {provider!r}{guess}"


def missing_credentials(model_id: str, api_base: str | None = None, api_key_env: str | None = None) -> list[str]:
    """The environment variables holding the key `model_id` needs that are not set (empty: nothing missing).

    `api_key_env`, when given, is the one variable read. Otherwise litellm's own check
    (`litellm.validate_environment`) is asked, and only its API keys count (a base URL or cloud credentials
    from a profile may come from elsewhere); a model with an `api_base` and no `api_key_env` (a local
    server) is not checked, nor are offline models."""
    if model_id.startswith(OFFLINE_PREFIXES):
        return []
    if api_key_env:
        return [] if os.environ.get(api_key_env) else [api_key_env]
    if api_base:
        return []
    try:
        found = _litellm().validate_environment(model=model_id)
    except Exception:  # a provider litellm cannot check: the trials will say
        return []
    if found.get("keys_in_environment"):
        return []
    return [str(key) for key in found.get("missing_keys") or [] if str(key).endswith("_API_KEY")]


def litellm_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("litellm")
    except PackageNotFoundError:
        return ""
