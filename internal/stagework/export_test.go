package stagework

// PublishRetries is how many more times a result's publish is tried within
// one delivery.
var PublishRetries = len(publishRetryWaits)
