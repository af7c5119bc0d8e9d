"""Harbor import and the process settings it needs. Only envevo.runtime imports this module."""

from __future__ import annotations

import logging
import os

# Harbor pulls in litellm, which otherwise tries to fetch a model price map from the internet on import.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from harbor.models.trial.config import (  # noqa: E402
    AgentConfig,
    EnvironmentConfig,
    TaskConfig,
    TrialConfig,
)
from harbor.models.trial.result import TrialResult  # noqa: E402
from harbor.trial.trial import Trial  # noqa: E402

HARBOR_VERSION = "0.26.0"

# Harbor logs every retry and teardown step at WARNING; envevo reports outcomes itself. harbor.utils.logger
# sets its own level to DEBUG when imported (above), so it is named explicitly.
for _name in ("harbor", "harbor.utils.logger", "LiteLLM", "litellm"):
    logging.getLogger(_name).setLevel(logging.ERROR)

__all__ = ["AgentConfig", "EnvironmentConfig", "TaskConfig", "TrialConfig", "TrialResult", "Trial", "HARBOR_VERSION"]
