package app

import (
	"fmt"
	"log/slog"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/config"
	"github.com/svcexport/collector/internal/source/catalog"
)

// The in-process API simulator (simulator.enabled): the settings it takes,
// its start, and the addresses and credentials it hands the pollers. Of
// the packages that run in the daemon, only this file imports apisim.

// Validate checks what only the application can check of a loaded
// configuration: with simulator.enabled, that simulator.settings decode
// into the simulator's configuration and are valid. Its error is a
// *config.KeyError naming simulator.settings (exit 2). cmd/collector calls
// it right after config.Load.
func Validate(cfg config.Config) error {
	if !cfg.Simulator.Enabled {
		return nil
	}
	_, err := simulatorSettings(cfg.Simulator)
	return err
}

// simulatorSettings decodes simulator.settings into the simulator's config,
// strictly: an unknown key is a *config.KeyError naming it.
func simulatorSettings(c config.SimulatorConfig) (apisim.Config, error) {
	sc := apisim.DefaultConfig()
	if len(c.Settings) == 0 {
		return sc, nil
	}
	b, err := yaml.Marshal(c.Settings)
	if err != nil {
		return sc, &config.KeyError{Key: "simulator.settings", Msg: err.Error()}
	}
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&sc); err != nil {
		return sc, &config.KeyError{Key: "simulator.settings", Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	if err := sc.Validate(); err != nil {
		return sc, &config.KeyError{Key: "simulator.settings", Msg: err.Error()}
	}
	return sc, nil
}

// resolveSource returns the pollers' configuration, with the in-process
// simulator's addresses and credentials filled in when it is enabled.
func resolveSource(cfg config.Config, log *slog.Logger) (catalog.Config, *apisim.Server, error) {
	sc := cfg.SourceConfig()
	if !cfg.Simulator.Enabled {
		return sc, nil, nil
	}
	simCfg, err := simulatorSettings(cfg.Simulator)
	if err != nil {
		return sc, nil, err
	}
	sim, err := apisim.New(simCfg)
	if err != nil {
		return sc, nil, fmt.Errorf("simulator: %w", err)
	}
	if err := sim.Start(cfg.Simulator.Listen); err != nil {
		sim.Close()
		return sc, nil, fmt.Errorf("simulator: %w", err)
	}
	log.Info("API simulator started in-process (simulator.enabled)", "core", sim.URL(), "edge", sim.EdgeURL())
	return cfg.SimulatorSourceConfig(sim.URL()), sim, nil
}
