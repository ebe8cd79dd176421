w = get_weather("Cairo")
"%s is %d degrees (%.1f%% humidity)" % (w["city"], w["temp_c"], w["humidity"])
