page = 0
names = []
while (r := search_products("laptop", page=page))["next_page"] is not None:
    names += [i["name"] for i in r["items"]]
    page = r["next_page"]
names + [i["name"] for i in r["items"]]
