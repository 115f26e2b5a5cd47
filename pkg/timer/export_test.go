package timer

// For the external tests.
var (
	IDToken = idToken
	Matches = matches
)
