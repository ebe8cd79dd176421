w = get_weather(city="Oslo")
"{}: {:.1f} degrees, humidity {:>3d}%".format(w["city"], w["temp_c"], w["humidity"])
