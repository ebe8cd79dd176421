tags = [set(get_user(i)["tags"]) for i in (1, 2, 3)]
{"common_12": sorted(tags[0] & tags[1]), "all": sorted(set().union(*tags)), "only_1": sorted(tags[0] - tags[1]), "sym": sorted(tags[0] ^ tags[1])}
