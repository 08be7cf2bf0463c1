package app

import (
	"errors"
	"strings"
	"testing"

	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/config"
)

// A bad simulator.settings key is a configuration error naming it (exit
// 2), found before anything starts.
func TestValidate_ABadSimulatorSettingIsAKeyErrorNamingIt(t *testing.T) {
	cfg := config.Default()
	cfg.Simulator.Enabled = true
	cfg.Simulator.Settings = map[string]any{"page_sise": 10}
	err := Validate(cfg)
	var ke *config.KeyError
	if !errors.As(err, &ke) || ke.Key != "simulator.settings" || !strings.Contains(err.Error(), "page_sise") {
		t.Fatalf("Validate = %v, want a *config.KeyError for simulator.settings naming page_sise", err)
	}
	cfg.Simulator.Settings = nil
	if err := Validate(cfg); err != nil {
		t.Fatalf("the simulator's defaults: %v", err)
	}
	cfg.Simulator.Enabled = false
	cfg.Simulator.Settings = map[string]any{"page_sise": 10}
	if err := Validate(cfg); err != nil {
		t.Fatalf("settings of a disabled simulator are not read: %v", err)
	}
}

// With the simulator on, the pollers get its addresses and credentials
// wherever the configuration names none, and the edge streams are on.
func TestConfiguredStreams_WithTheSimulatorIncludeTheEdgeSources(t *testing.T) {
	cfg := config.Default()
	cfg.Simulator.Enabled = true
	streams, err := configuredStreams(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(streams) != 9 {
		t.Fatalf("%d streams, want the nine sources of the default account: %v", len(streams), streams)
	}
	cfg.Simulator.Enabled = false
	if streams, _ := configuredStreams(cfg); len(streams) != 7 {
		t.Fatalf("%d streams without the simulator and edge.base_url, want 7", len(streams))
	}
}

// The credentials the configuration fills in for the in-process simulator
// are the ones the simulator accepts by default.
func TestSimulatorSourceConfigCarriesTheSimulatorsDefaultCredentials(t *testing.T) {
	cfg := config.Default()
	cfg.Simulator.Enabled = true
	sc := cfg.SimulatorSourceConfig("http://127.0.0.1:9")
	def := apisim.DefaultConfig()
	if sc.API.KeyID != def.Keys[0].KeyID || sc.API.Secret.Reveal() != def.Keys[0].Secret || sc.Edge.Token.Reveal() != def.EdgeToken {
		t.Fatalf("filled in key %q and the secrets do not match the simulator's default key %q", sc.API.KeyID, def.Keys[0].KeyID)
	}
	if sc.API.BaseURL != "http://127.0.0.1:9" || sc.Edge.BaseURL != "http://127.0.0.1:9/edge" {
		t.Fatalf("addresses %q, %q", sc.API.BaseURL, sc.Edge.BaseURL)
	}
}
