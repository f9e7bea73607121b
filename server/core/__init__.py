"""The service's parts, one job each, composed from the settings by ``parts.compose``:
``live_index`` (the live version, swapped without a restart), ``access`` (scopes, collections,
accepted questions, what a remote caller sees of a source), ``search``, ``ask`` (the agent in
a conversation), ``feedback``, ``status`` (health, index info) and ``ingest`` (from the
settings). ``server/service.py`` is the thin facade the doors call.
"""
