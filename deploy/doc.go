// Package deploy holds Steward's deployment files (deploy/k8s, ../docker-compose.yml, ../Dockerfile); no container engine runs in CI, so its tests check them by strict decoding, by the properties a platform team asks of them, and by running the real binary with each container's args, environment and mounts.
package deploy
