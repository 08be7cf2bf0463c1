// Package awstest runs what the AWS SDK's default credential chain talks
// to, on loopback, for tests of code that takes AWS credentials: a
// Security Token Service answering AssumeRoleWithWebIdentity (the call
// behind EKS IAM roles for service accounts), and an environment that
// points the SDK at it and away from the machine's own AWS files and the
// EC2 instance metadata service. Tests only; no production package may
// import it.
package awstest

import (
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Isolate points the AWS SDK of this process at nothing of the machine:
// empty shared credentials and config files in a temporary directory, no
// EC2 instance metadata service (AWS_EC2_METADATA_DISABLED, so that no
// request leaves for 169.254.169.254), no AWS_* credential variables, the
// region given. It uses t.Setenv: the test cannot be parallel. It returns
// the paths of the credentials and config files, for the test to fill.
func Isolate(t *testing.T, region string) (credentialsFile, configFile string) {
	t.Helper()
	dir := t.TempDir()
	credentialsFile = filepath.Join(dir, "credentials")
	configFile = filepath.Join(dir, "config")
	for _, p := range []string{credentialsFile, configFile} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for k, v := range map[string]string{
		"AWS_SHARED_CREDENTIALS_FILE": credentialsFile, "AWS_CONFIG_FILE": configFile,
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_REGION": region, "AWS_DEFAULT_REGION": "",
		"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SESSION_TOKEN": "",
		"AWS_PROFILE": "", "AWS_DEFAULT_PROFILE": "", "AWS_WEB_IDENTITY_TOKEN_FILE": "", "AWS_ROLE_ARN": "",
		"AWS_ROLE_SESSION_NAME": "", "AWS_CONTAINER_CREDENTIALS_FULL_URI": "", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "",
		"AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE": "", "AWS_CONTAINER_AUTHORIZATION_TOKEN": "",
		"AWS_ENDPOINT_URL": "", "AWS_ENDPOINT_URL_STS": "",
	} {
		t.Setenv(k, v)
	}
	return credentialsFile, configFile
}

// STS is a Security Token Service on 127.0.0.1 that answers
// AssumeRoleWithWebIdentity for one role: each web identity token gets
// its own credentials (Credentials tells which), expired at once, so that
// the SDK's cache asks again at every use and reads the token file anew.
type STS struct {
	srv  *httptest.Server
	role string
	mu   sync.Mutex
	seen []string
}

// Credentials are the temporary credentials STS issues for a web
// identity token.
func Credentials(token string) (accessKeyID, secretAccessKey, sessionToken string) {
	return "ASIA" + token, "secret-of-" + token, "session-of-" + token
}

// NewSTS starts an STS that accepts role, closed when t ends.
func NewSTS(t *testing.T, role string) *STS {
	t.Helper()
	s := &STS{role: role}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// WebIdentity sets the environment EKS's pod identity webhook gives a pod
// of a service account annotated with eks.amazonaws.com/role-arn:
// AWS_ROLE_ARN, AWS_WEB_IDENTITY_TOKEN_FILE (tokenFile), and here
// AWS_ENDPOINT_URL_STS, which sends the SDK's STS calls to s.
func (s *STS) WebIdentity(t *testing.T, tokenFile string) {
	t.Helper()
	t.Setenv("AWS_ROLE_ARN", s.role)
	t.Setenv("AWS_WEB_IDENTITY_TOKEN_FILE", tokenFile)
	t.Setenv("AWS_ENDPOINT_URL_STS", s.srv.URL)
}

// Tokens are the web identity tokens STS was asked with, in order.
func (s *STS) Tokens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

type stsResponse struct {
	XMLName     xml.Name `xml:"https://sts.amazonaws.com/doc/2011-06-15/ AssumeRoleWithWebIdentityResponse"`
	Credentials struct {
		AccessKeyID     string `xml:"AccessKeyId"`
		SecretAccessKey string
		SessionToken    string
		Expiration      string
	} `xml:"AssumeRoleWithWebIdentityResult>Credentials"`
	AssumedRoleARN string `xml:"AssumeRoleWithWebIdentityResult>AssumedRoleUser>Arn"`
	AssumedRoleID  string `xml:"AssumeRoleWithWebIdentityResult>AssumedRoleUser>AssumedRoleId"`
	RequestID      string `xml:"ResponseMetadata>RequestId"`
}

type stsError struct {
	XMLName xml.Name `xml:"https://sts.amazonaws.com/doc/2011-06-15/ ErrorResponse"`
	Type    string   `xml:"Error>Type"`
	Code    string   `xml:"Error>Code"`
	Message string   `xml:"Error>Message"`
}

func (s *STS) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/xml")
	fail := func(code, msg string) {
		w.WriteHeader(http.StatusBadRequest)
		_ = xml.NewEncoder(w).Encode(stsError{Type: "Sender", Code: code, Message: msg})
	}
	if err := r.ParseForm(); err != nil || r.Method != http.MethodPost {
		fail("InvalidAction", "want a POST form")
		return
	}
	if a := r.PostForm.Get("Action"); a != "AssumeRoleWithWebIdentity" {
		fail("InvalidAction", fmt.Sprintf("action %q", a))
		return
	}
	if role := r.PostForm.Get("RoleArn"); role != s.role {
		fail("AccessDenied", fmt.Sprintf("role %q", role))
		return
	}
	tok := r.PostForm.Get("WebIdentityToken")
	if tok == "" {
		fail("InvalidIdentityToken", "no token")
		return
	}
	s.mu.Lock()
	s.seen = append(s.seen, tok)
	s.mu.Unlock()
	var resp stsResponse
	resp.Credentials.AccessKeyID, resp.Credentials.SecretAccessKey, resp.Credentials.SessionToken = Credentials(tok)
	// Expired already: the SDK's cache hands these out once and asks
	// again at the next use.
	resp.Credentials.Expiration = time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	resp.AssumedRoleARN = s.role + "/collector"
	resp.AssumedRoleID = "AROATEST:collector"
	resp.RequestID = "test"
	_ = xml.NewEncoder(w).Encode(resp)
}
