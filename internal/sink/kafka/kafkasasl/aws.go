package kafkasasl

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/sasl/aws"

	"github.com/svcexport/collector/internal/secret"
)

// credentials returns the function each AWS_MSK_IAM authentication takes
// its credentials from: the configured access key, its secret (and
// session token) read anew each time from their files when given as
// files; or, without an access key id, the environment variables
// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN, read
// here. Everything is read once now, so that a missing piece is an error
// naming its key. scr learns the secret key and the session token at each
// read.
func (a AWSConfig) credentials(p string, getenv func(string) string, scr *secret.Scrubber) (func() (aws.Auth, error), error) {
	if a.AccessKeyID == "" {
		id, key, tok := getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY"), getenv("AWS_SESSION_TOKEN")
		if id == "" || key == "" {
			return nil, fmt.Errorf("%s.access_key_id: not set, and the environment lacks AWS_ACCESS_KEY_ID or AWS_SECRET_ACCESS_KEY (set both, or %s.access_key_id and %s.secret_access_key)", p, p, p)
		}
		scr.Add(secret.New(key), secret.New(tok))
		auth := aws.Auth{AccessKey: id, SecretKey: key, SessionToken: tok}
		return func() (aws.Auth, error) { return auth, nil }, nil
	}
	secretKey := func() (string, error) { return a.SecretAccessKey.Reveal(), nil }
	if !a.SecretAccessKey.IsSet() {
		secretKey = fileSecret(p+".secret_access_key_file", a.SecretAccessKeyFile)
	}
	secretKey = scrubbed(scr, "", secretKey)
	session := func() (string, error) { return a.SessionToken.Reveal(), nil }
	if !a.SessionToken.IsSet() && a.SessionTokenFile != "" {
		session = fileSecret(p+".session_token_file", a.SessionTokenFile)
	}
	session = scrubbed(scr, "", session)
	creds := func() (aws.Auth, error) {
		key, err := secretKey()
		if err != nil {
			return aws.Auth{}, err
		}
		tok, err := session()
		if err != nil {
			return aws.Auth{}, err
		}
		return aws.Auth{AccessKey: a.AccessKeyID, SecretKey: key, SessionToken: tok}, nil
	}
	if _, err := creds(); err != nil {
		return nil, err
	}
	return creds, nil
}
