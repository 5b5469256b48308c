"""Reports: the JSON result, terminal tables, the HTML page and the Markdown summary."""
