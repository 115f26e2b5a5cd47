package toolreg

import "github.com/steward-run/steward/pkg/raceguard"

// GuardShared says whether this build checks that readers leave the
// entries they look up alone.
const GuardShared = raceguard.On
