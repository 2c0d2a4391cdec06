"""Running one trial at a time: the timing protocol (child side), launchers that start a trial's
process(es) and track them (parent side, `launchers/`), device probes, and a session that runs
many trials and stores each as it finishes."""
