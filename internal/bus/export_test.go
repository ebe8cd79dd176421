package bus

// NotReady is notReady, for the tests of package bus_test.
var NotReady = notReady

// ErrPlacementPending is errPlacementPending.
var ErrPlacementPending = errPlacementPending

// ProbeAwait is probeAwait.
const ProbeAwait = probeAwait

// ClusterReportWait is clusterReportWait.
const ClusterReportWait = clusterReportWait
