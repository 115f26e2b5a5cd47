// Package deploy holds Steward's deployment files (deploy/k8s, ../docker-compose.yml, ../Dockerfile); its tests check them by strict decoding, since no container engine runs in CI.
package deploy
