r = search_products("phone")
last = r["next_page"] is None
u = None
{"single_page": last, "u_missing": u is None, "not_none": r is not None}
