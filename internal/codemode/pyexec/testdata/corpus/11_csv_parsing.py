import csv, io
text = get_text("csv")
rows = list(csv.DictReader(io.StringIO(text)))
total = sum(int(r["qty"]) * float(r["price"]) for r in rows)
f"{len(rows)} rows, total {total:.2f}"
