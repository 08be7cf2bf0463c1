package app

import (
	"github.com/svcexport/collector/internal/config"
	"github.com/svcexport/collector/internal/secret"
	"github.com/svcexport/collector/internal/source/catalog"
)

// newScrubber returns the process's one secret scrubber (issue 20): it
// knows every credential the configuration holds, given inline or in a
// file, with the forms a request carries it in: the core API secret and
// the edge token of src (the pollers' configuration, the simulator's
// credentials filled in), and for each sink of cfg the Kafka SASL
// password, OAuth static token and client secret (with the client id, as
// HTTP Basic), AWS secret access key and session token, and the ClickHouse
// password (with the user, as HTTP Basic); and the AWS_SECRET_ACCESS_KEY
// and AWS_SESSION_TOKEN that getenv gives, which the Kafka sink may use.
// The API clients and the sinks get it and add what they read later (a
// secret file rewritten while the process runs). A file that cannot be
// read is skipped here: the component that needs it reports it.
func newScrubber(cfg config.Config, src catalog.Config, getenv func(string) string) *secret.Scrubber {
	return newTenantsScrubber(cfg, []catalog.Config{src}, getenv)
}

// newTenantsScrubber is newScrubber for the pollers' configurations of
// every tenant (config.Config.SourceConfigs): one scrubber knows every
// tenant's secret and token, so that no tenant's shows in another's
// errors either.
func newTenantsScrubber(cfg config.Config, srcs []catalog.Config, getenv func(string) string) *secret.Scrubber {
	s := secret.NewScrubber()
	add := func(inline secret.Secret, file string) secret.Secret {
		v, err := secret.Resolve(inline.Reveal(), file)
		if err != nil {
			return secret.Secret{}
		}
		s.Add(v)
		return v
	}
	for _, src := range srcs {
		add(src.API.Secret, src.API.SecretFile)
		add(src.Edge.Token, src.Edge.TokenFile)
	}
	for _, sc := range cfg.Sinks() {
		switch sc.Type {
		case config.SinkKafka:
			sasl := sc.Kafka.SASL
			add(sasl.Password, sasl.PasswordFile)
			add(sasl.OAuth.Token, sasl.OAuth.TokenFile)
			s.AddBasic(sasl.OAuth.ClientID, add(sasl.OAuth.ClientSecret, sasl.OAuth.ClientSecretFile))
			add(sasl.AWS.SecretAccessKey, sasl.AWS.SecretAccessKeyFile)
			add(sasl.AWS.SessionToken, sasl.AWS.SessionTokenFile)
		case config.SinkClickHouse:
			ch := sc.ClickHouse
			s.AddBasic(ch.Username, add(ch.Password, ch.PasswordFile))
		}
	}
	s.Add(secret.New(getenv("AWS_SECRET_ACCESS_KEY")), secret.New(getenv("AWS_SESSION_TOKEN")))
	return s
}
