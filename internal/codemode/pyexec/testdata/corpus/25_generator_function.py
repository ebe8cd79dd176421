def pages(query):
    page = 0
    while page is not None:
        r = search_products(query, page=page)
        yield from r["items"]
        page = r["next_page"]

cheap = [p["name"] for p in pages("laptop") if p["price"] < 1000]
cheap
