package catalog

import (
	"testing"

	"github.com/svcexport/collector/internal/secret"
)

func TestEndpoints_FillOnlyWhatTheConfigurationLeavesUnset(t *testing.T) {
	e := Endpoints{BaseURL: "http://sim", EdgeURL: "http://sim/edge", KeyID: "k", Secret: "s", EdgeToken: "t"}
	got := e.Fill(DefaultConfig())
	if got.API.BaseURL != "http://sim" || got.API.KeyID != "k" || got.API.Secret.Reveal() != "s" ||
		got.Edge.BaseURL != "http://sim/edge" || got.Edge.Token.Reveal() != "t" {
		t.Fatalf("unset fields not filled: %+v %+v", got.API, got.Edge)
	}
	own := DefaultConfig()
	own.API.BaseURL, own.API.KeyID, own.API.SecretFile = "https://api.example", "mine", "/run/secret"
	own.Edge.BaseURL, own.Edge.Token = "https://edge.example", secret.New("my-token")
	got = e.Fill(own)
	if got.API.BaseURL != "https://api.example" || got.API.KeyID != "mine" || got.API.Secret.IsSet() ||
		got.Edge.BaseURL != "https://edge.example" || got.Edge.Token.Reveal() != "my-token" {
		t.Fatalf("what the configuration sets was overridden: %+v %+v", got.API, got.Edge)
	}
}
