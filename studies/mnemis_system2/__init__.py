"""What Mnemis's System-2 could add: its reach, the ceiling of a perfect reranker, and a
learned-reranker bound (docs/mnemis.md, "What System-2 could add")."""
