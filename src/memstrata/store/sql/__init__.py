"""The SQL core both stores share: the dialect object each backend provides, the host
base class the store's parts derive from, and the rules written once over them (record
ownership, build marks and their retry policy, jobs, LLM accounting, the export order).
Nothing here imports a database driver."""
