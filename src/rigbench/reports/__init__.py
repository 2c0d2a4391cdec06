"""Ways to show results: terminal tables now; JSON/CSV export in rigbench.store.export."""
