"""Running trials: the timing protocol (child side), isolation in a child process (parent
side), device probes, and a session that runs many trials and stores each as it finishes."""
