package toolreg

// GuardShared says whether this build checks that readers leave the
// entries they look up alone.
const GuardShared = guardShared
