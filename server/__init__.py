"""The composition root: settings, the service, and the front doors (CLI, HTTP API, MCP).

Nothing may be fetched from the internet at run time: models come from installed packages and
LiteLLM's price table from its bundled copy. These must be set before those libraries are
imported, and every entry point imports this package first.
"""

import os

for _name, _value in {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
}.items():
    os.environ.setdefault(_name, _value)
