package deploy_test

// planes are Steward's four planes: one compose service and one
// Kubernetes Deployment+Service each.
var planes = []string{"control", "governance", "execution", "state"}

const (
	planePort = 7700
	natsURL   = "nats://nats:4222"
	k8sDir    = "k8s"
)
