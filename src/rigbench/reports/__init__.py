"""Ways to show results: terminal tables; the HTML report and PNG charts (charts.py,
html.py, png.py; these need the `report` extra); JSON/CSV export in rigbench.store.export."""
