"""The stores: what docfinder remembers between requests.

``database`` opens SQLite (default) or PostgreSQL (``database_url``) behind one small
interface; ``conversations`` keeps each thread's turns and the answers given, scoped to the
caller who started it; ``feedback`` keeps ratings and labels with pseudonymised users.
Stores know nothing of the doors that call them.
"""
