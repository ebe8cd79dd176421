import asyncio

async def main():
    a, b = await asyncio.gather(get_stock_price("AAPL"), get_stock_price("MSFT"))
    return a["price"] + b["price"]

asyncio.run(main())
