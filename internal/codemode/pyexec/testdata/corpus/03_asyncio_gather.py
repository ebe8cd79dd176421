import asyncio
cities = ["Paris", "Oslo", "Cairo"]
results = await asyncio.gather(*(get_weather(c) for c in cities))
{w["city"]: w["temp_c"] for w in results}
