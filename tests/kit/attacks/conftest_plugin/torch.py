"""Attack: a module shadowing torch (only works if the folder is on sys.path)."""

raise SystemExit(0)
