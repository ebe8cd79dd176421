import asyncio

async def fetch(city):
    try:
        w = await get_weather(city)
        return w["temp_c"]
    except ToolError as e:
        return -1

async def main():
    return await asyncio.gather(*[fetch(c) for c in ["Lima", "Atlantis", "Tokyo"]])

asyncio.run(main())
