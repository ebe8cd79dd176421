u = get_user(2)
name = u["name"]
{
    "upper": name.upper(),
    "initials": "".join(p[0] for p in name.split()),
    "domain": u["email"].split("@")[1],
    "padded": name.ljust(15, ".") + "|",
    "title": "hello world".title(),
    "startswith": u["email"].startswith("alan"),
    "replace": name.replace("Alan", "A."),
    "count": name.lower().count("a"),
}
