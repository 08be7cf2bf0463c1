package kafkasasl

import (
	"context"
	"fmt"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/twmb/franz-go/pkg/sasl/aws"

	"github.com/svcexport/collector/internal/secret"
)

// awsCredentials is where each AWS_MSK_IAM authentication takes its
// credentials, with a description of their source that holds no secret.
type awsCredentials func(ctx context.Context) (auth aws.Auth, source string, err error)

// credentials returns the function each AWS_MSK_IAM authentication takes
// its credentials from. With an access key id: that key, its secret (and
// session token) read anew each time from their files when given as
// files, everything read once now so that a missing piece is an error
// naming its key. Without one: the AWS SDK's default credential chain
// (defaultChain). scr learns the secret key and the session token at each
// read.
func (a AWSConfig) credentials(p string, scr *secret.Scrubber) (awsCredentials, error) {
	if a.AccessKeyID == "" {
		return defaultChain(p, scr)
	}
	source := "configuration: " + p + ".access_key_id with " + p + ".secret_access_key"
	secretKey := func() (string, error) { return a.SecretAccessKey.Reveal(), nil }
	if !a.SecretAccessKey.IsSet() {
		secretKey = fileSecret(p+".secret_access_key_file", a.SecretAccessKeyFile)
		source += "_file"
	}
	secretKey = scrubbed(scr, "", secretKey)
	session := func() (string, error) { return a.SessionToken.Reveal(), nil }
	switch {
	case a.SessionToken.IsSet():
		source += " and .session_token"
	case a.SessionTokenFile != "":
		session = fileSecret(p+".session_token_file", a.SessionTokenFile)
		source += " and .session_token_file"
	}
	session = scrubbed(scr, "", session)
	creds := func(context.Context) (aws.Auth, string, error) {
		key, err := secretKey()
		if err != nil {
			return aws.Auth{}, source, err
		}
		tok, err := session()
		if err != nil {
			return aws.Auth{}, source, err
		}
		return aws.Auth{AccessKey: a.AccessKeyID, SecretKey: key, SessionToken: tok}, source, nil
	}
	if _, _, err := creds(context.Background()); err != nil {
		return nil, err
	}
	return creds, nil
}

// defaultChain returns credentials from the AWS SDK's default chain, the
// one every AWS tool follows: the environment (AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), the shared files
// (~/.aws/credentials and ~/.aws/config, AWS_PROFILE; SSO and
// credential_process profiles included), a web identity token
// (AWS_WEB_IDENTITY_TOKEN_FILE with AWS_ROLE_ARN: EKS IRSA), the container
// endpoint (AWS_CONTAINER_CREDENTIALS_FULL_URI: EKS Pod Identity, ECS
// task roles) and the EC2 instance role (IMDS). The chain is loaded now,
// so that a broken profile is an error at start; the credentials are
// asked for at each authentication, through the SDK's credentials cache,
// which keeps them until shortly before they expire and then asks the
// provider again (a rotated web identity token is read then). No request
// leaves before the first authentication.
func defaultChain(p string, scr *secret.Scrubber) (awsCredentials, error) {
	// LoadDefaultConfig reads the environment and the shared files and
	// sends nothing: the context is not used for a request here.
	cfg, err := awsconfig.LoadDefaultConfig(context.Background())
	if err != nil {
		return nil, fmt.Errorf("%s: no access_key_id set, and the AWS default credential chain cannot be loaded: %w", p, err)
	}
	provider := cfg.Credentials
	if provider == nil {
		return nil, fmt.Errorf("%s: no access_key_id set, and the AWS default credential chain has no provider", p)
	}
	if _, ok := provider.(*sdkaws.CredentialsCache); !ok {
		provider = sdkaws.NewCredentialsCache(provider)
	}
	// The cache lets one Retrieve at a time reach the provider.
	return func(ctx context.Context) (aws.Auth, string, error) {
		c, err := provider.Retrieve(ctx)
		if err != nil {
			return aws.Auth{}, "default chain", fmt.Errorf("%s: no access_key_id set, and the AWS default credential chain found no credentials: %w", p, err)
		}
		scr.Add(secret.New(c.SecretAccessKey), secret.New(c.SessionToken))
		return aws.Auth{AccessKey: c.AccessKeyID, SecretKey: c.SecretAccessKey, SessionToken: c.SessionToken},
			"default chain: " + c.Source, nil
	}, nil
}
