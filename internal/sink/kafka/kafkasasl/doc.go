// Package kafkasasl is the SASL authentication of the Kafka sink (keys
// under sink.kafka.sasl): its configuration and validation, and the
// franz-go mechanism it builds. PLAIN and SCRAM-SHA-256/512 take a user
// and a password; OAUTHBEARER (RFC 7628, franz-go's pkg/sasl/oauth) takes
// a static token, a token file re-read whenever it changes (so that an
// outside process can refresh it), or an OAuth 2.0 client-credentials
// grant (RFC 6749 section 4.4) against a token URL, fetched with net/http
// and cached until shortly before it expires; AWS_MSK_IAM (franz-go's
// pkg/sasl/aws, which signs the request with AWS Signature Version 4)
// takes an access key from the configuration or files, or else from the
// AWS SDK's default credential chain (environment, shared files, IRSA web
// identity, EKS Pod Identity, instance role), through the SDK's cache.
//
// Secrets (passwords, tokens, client secrets, secret access keys) are
// secret.Secret values or files: no error, log line or metric of this
// package holds one. What a token endpoint says passes the process's
// secret.Scrubber (Options.Scrubber), which learns each secret Build
// reads, in case the endpoint echoes the request.
//
// It knows franz-go's SASL packages, the AWS SDK's config and
// credentials, net/http and package secret; nothing
// of records, topics or the pipeline. Package kafka is its only user.
package kafkasasl
