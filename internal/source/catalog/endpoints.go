package catalog

import "github.com/svcexport/collector/internal/secret"

// Endpoints are API locations and credentials that stand in for those a
// configuration leaves unset, when something else provides the APIs: the
// in-process simulator (simulator.enabled) serves both, with credentials
// of its own.
type Endpoints struct {
	// BaseURL and EdgeURL are the core and the edge API.
	BaseURL, EdgeURL string
	// KeyID and Secret are the core API key; EdgeToken the edge token.
	KeyID, Secret, EdgeToken string
}

// Fill returns cfg with every API location and credential it leaves unset
// taken from e; what cfg sets stays. A secret counts as set when given
// inline or as a file.
func (e Endpoints) Fill(cfg Config) Config {
	if cfg.API.BaseURL == "" {
		cfg.API.BaseURL = e.BaseURL
	}
	if cfg.API.KeyID == "" {
		cfg.API.KeyID = e.KeyID
	}
	if !cfg.API.Secret.IsSet() && cfg.API.SecretFile == "" {
		cfg.API.Secret = secret.New(e.Secret)
	}
	if cfg.Edge.BaseURL == "" {
		cfg.Edge.BaseURL = e.EdgeURL
	}
	if !cfg.Edge.Token.IsSet() && cfg.Edge.TokenFile == "" {
		cfg.Edge.Token = secret.New(e.EdgeToken)
	}
	return cfg
}
