"""The SDKs a recording run calls, imported in a background thread from the moment the run engages.

Importing the anthropic or openai SDK (and vcrpy, which records their HTTP) costs seconds of CPU. A
run that imports them at its first call puts that on its critical path: at a high `--max-concurrency`
the first item then waits the import out before any call goes. Started at engagement, the import
runs while pytest collects and the first item builds its prompts; the first call waits only for what
is left of it (`sdk_common.import_sdk` holds one lock per process, so nothing is imported twice).

Only a run that can record starts it: a record mode other than `none` (so never a `CI=true` replay),
not a plan or a collection, and at least one model of the run behind a provider SDK. A replay-only
run imports no SDK here, as before. An xdist controller makes no call; each worker starts its own.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from .state import starts_workers

RECORDER_MODULES = ("vcr", "vcr.patch")  # what opening a recording imports (`cassettes._open_cassette`)


def start(config: pytest.Config, settings: Any, runner: Any) -> threading.Thread | None:
    """Start importing the SDKs of the run's provider models, when this run can record; the thread, or None."""
    from ..cassettes import default_record_mode

    mode = settings.record_mode or default_record_mode()
    if mode == "none" or settings.plan or config.option.collectonly or starts_workers(config):
        return None
    providers = provider_names([runner.model(name) for name in sorted(runner.models_used())])
    if not providers:
        return None
    thread = threading.Thread(target=_import, args=(providers,), name="skilltransfer-sdk-import", daemon=True)
    thread.start()
    return thread


def provider_names(models: list[Any]) -> list[str]:
    """The providers of the models among `models` that call through an SDK, in a stable order."""
    from ..models.providers import ProviderModel

    return sorted({model.target.provider for model in models if isinstance(model, ProviderModel)})


def _import(providers: list[str]) -> None:
    import importlib

    from ..models.fidelity import fingerprint
    from ..models.providers import sdk_module
    from ..models.sdk_common import import_sdk

    try:
        for provider in providers:
            import_sdk(sdk_module(provider))
            fingerprint(provider)  # the installed versions a recording stamps (read once per process)
        for module in RECORDER_MODULES:
            importlib.import_module(module)
    except Exception:  # noqa: BLE001 - the first call imports it again and reports what went wrong
        pass
