rs = parallel_map(get_weather, [{"city": "Paris"}, {"city": "Nowhere"}, {"city": "Lima"}])
[r["temp_c"] if not isinstance(r, ToolError) else "failed" for r in rs]
