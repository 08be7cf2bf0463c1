package apisim

import "strconv"

// generator writes records: every field of a record derives from its key
// (and, for edge alerts, from the time the record is looked at). It holds
// only read-only settings and is safe for concurrent use; each goroutine
// brings its own rec.
type generator struct {
	alertWindow int64 // ms, C6 alert updates
}

// generate fills r with the record of stream st whose key is key and whose
// record time is t (Unix ms). asOf is the time the record is seen at: edge
// alerts show the version current at asOf.
func (g *generator) generate(r *rec, st *stream, key uint64, t, asOf int64) {
	r.reset(recFlags(key, !st.src.info().edge))
	x := rnd{s: key}
	switch st.src {
	case srcChangedFiles:
		genChangedFile(r, &x, st, t)
	case srcConnections:
		genConnection(r, &x, st, t)
	case srcDNS:
		genDNS(r, &x, st, t)
	case srcUserLogins:
		genUserLogin(r, &x, st, t)
	case srcAgentInfo:
		genAgentInfo(r, &x, st, t)
	case srcAuditLogs:
		genAuditLog(r, &x, st, t)
	case srcCloudActivities:
		genCloudActivity(r, &x, st, t)
	case srcEdgeAuditEvents:
		genEdgeAuditEvent(r, &x, st, t)
	case srcEdgeAlerts:
		genEdgeAlert(r, &x, st, key, t, asOf, g.alertWindow)
	}
	genIngest(r, &x, st)
	r.finish()
}

// recFlags picks the served-form variations of a record: about 10% escape
// non-ASCII characters, 5% escape slashes, 3% of core records use "+0000"
// offsets in their times (C3).
func recFlags(key uint64, core bool) uint8 {
	h := mix64(key ^ 0x7f4a7c15f39cc060)
	var f uint8
	if h%100 < 10 {
		f |= flEscNonASCII
	}
	if h>>8%100 < 5 {
		f |= flEscSlash
	}
	if h>>16&1 == 1 {
		f |= flUpperHex
	}
	if core && h>>24%100 < 3 {
		f |= flPlusOffset
	}
	return f
}

// genIngest adds "_ingest", a member no document names, with a nested
// object and non-ASCII text (C3: records may carry unknown fields).
func genIngest(r *rec, x *rnd, st *stream) {
	r.beginObj("_ingest")
	k := x.n(len(ingestRegions))
	r.str("region", ingestRegions[k])
	r.str("node", ingestNodes[k])
	r.int("seq", int64(x.next()>>20))
	r.end()
}

// Vocabulary of the generated records (read-only).
var (
	ingestRegions = [...]string{"eu-central-1", "us-east-1", "ap-northeast-1", "eu-west-2"}
	ingestNodes   = [...]string{"ingest-frankfurt-2", "ingest-virginia-7", "ingest-東京-1", "ingest-zürich-3"}
	userNames     = [...]string{"root", "ubuntu", "ec2-user", "josé.müller", "ana.lópez", "søren.kierkegaard",
		"田中太郎", "li.wei", "françois.dupont", "zoë.ångström", "łukasz.żółć", "admin", "svc-deploy", "محمد.علي"}
	displayNames = [...]string{"José Müller", "Ana López", "Søren Kierkegaard", "田中 太郎", "Li Wei",
		"François Dupont", "Zoë Ångström", "Łukasz Żółć", "Site Admin", "Deploy Bot 🚀", "محمد علي"}
	emails = [...]string{"jose.mueller@acme.example", "ana.lopez@acme.example", "soren@acme.example",
		"tanaka@acme.example", "li.wei@acme.example", "francois@acme.example", "zoe@acme.example",
		"lukasz@acme.example", "admin@acme.example", "deploy-bot@acme.example", "m.ali@acme.example"}
	filePaths = [...]string{"/etc/passwd", "/etc/ssh/sshd_config", "/var/log/auth.log", "/usr/bin/sudo",
		"/home/josé/Documents/résumé.pdf", "/opt/app/config.yaml", "/srv/東京/データ.csv",
		`C:\Users\José Müller\AppData\Local\Temp\setup.exe`, `/tmp/"quoted" name.txt`,
		"/var/lib/docker/overlay2/merged/usr/lib/libssl.so.3", "/root/.bash_history"}
	fqdns = [...]string{"api.acme.example", "s3.eu-central-1.amazonaws.com", "www.google.com",
		"xn--tkyo-0ra.example.jp", "login.microsoftonline.com", "registry-1.docker.io",
		"ocsp.digicert.com", "updates.example.ch", "time.cloudflare.com"}
	osNames      = [...]string{"Linux", "Linux", "Linux", "Windows", "Darwin"}
	envNames     = [...]string{"prod", "staging", "dev"}
	teamNames    = [...]string{"plateforme-données", "東京チーム", "payments", "sre", "ml-infra"}
	entityTypes  = [...]string{"Process", "InternalIpAddress", "ExternalIp", "DnsName"}
	protocols    = [...]string{"TCP", "UDP"}
	ports        = [...]int64{443, 80, 53, 22, 5432, 6379, 8080, 9092, 3306}
	auditEvents  = [...][3]string{{"Login", "Login", "logged in"}, {"CreateAlertRule", "Create", "created alert rule"}, {"UpdateAlertChannel", "Update", "updated alert channel"}, {"DeleteCloudAccount", "Delete", "deleted cloud account"}, {"CreateAccessToken", "Create", "created an API access token"}, {"UpdateUser", "Update", "changed the role of"}}
	cloudEvents  = [...]string{"CloudTrailDefaultAlert", "NewUser", "S3BucketPolicyChanged", "IAMAccessKeyCreated", "SecurityGroupChanged", "ConsoleLoginFailure"}
	cloudAPIs    = [...][2]string{{"s3.amazonaws.com", "GetObject"}, {"iam.amazonaws.com", "CreateAccessKey"}, {"ec2.amazonaws.com", "AuthorizeSecurityGroupIngress"}, {"signin.amazonaws.com", "ConsoleLogin"}, {"sts.amazonaws.com", "AssumeRole"}}
	places       = [...][2]string{{"Zürich", "Schweiz"}, {"東京", "日本"}, {"São Paulo", "Brasil"}, {"Köln", "Deutschland"}, {"Frankfurt", "Deutschland"}, {"Virginia", "United States"}}
	httpMethods  = [...]string{"GET", "GET", "GET", "POST", "PUT", "PATCH", "DELETE"}
	edgePaths    = [...][2]string{{"/api/v1/apps", "/api/v1/apps"}, {"/api/v1/apps/7f1c", "/api/v1/apps/{uuid}"}, {"/api/v1/policies", "/api/v1/policies"}, {"/api/v1/users/3a9e", "/api/v1/users/{uuid}"}, {"/api/v1/alerts", "/api/v1/alerts"}, {"/api/v1/accesses", "/api/v1/accesses"}}
	alertTypes   = [...]string{"IMPOSSIBLE_TRAVEL", "MALWARE_DOWNLOAD", "DATA_EXFILTRATION", "SUSPICIOUS_LOGIN", "POLICY_VIOLATION"}
	alertClosing = [...]string{"TRUE_POSITIVE", "FALSE_POSITIVE", "BENIGN"}
)

// mid is a machine id of the stream's account; a few hundred machines.
func machine(x *rnd) int64 { return 1000 + int64(x.n(240)) }

func appendHostname(dst []byte, mid int64) []byte {
	n := mid % 100
	switch mid % 5 {
	case 0:
		dst = append(dst, "ip-10-0-"...)
		dst = strconv.AppendInt(dst, mid>>8&255, 10)
		dst = append(dst, '-')
		dst = strconv.AppendInt(dst, mid&255, 10)
		return append(dst, ".ec2.internal"...)
	case 1:
		dst = append(dst, "web-東京-"...)
	case 2:
		dst = append(dst, "db-zürich-"...)
	case 3:
		dst = append(dst, "k8s-node-"...)
	default:
		dst = append(dst, "build-são-paulo-"...)
	}
	return append2(dst, int(n))
}

// appendMachineIP is the private address of a machine.
func appendMachineIP(dst []byte, mid int64) []byte {
	return appendIPv4(dst, 10, byte(mid>>16), byte(mid>>8), byte(mid))
}

func appendIPv4(dst []byte, a, b, c, d byte) []byte {
	dst = strconv.AppendUint(dst, uint64(a), 10)
	dst = append(dst, '.')
	dst = strconv.AppendUint(dst, uint64(b), 10)
	dst = append(dst, '.')
	dst = strconv.AppendUint(dst, uint64(c), 10)
	dst = append(dst, '.')
	return strconv.AppendUint(dst, uint64(d), 10)
}

// appendPublicIP writes an address from a few public ranges.
func appendPublicIP(dst []byte, h uint64) []byte {
	firsts := [...]byte{34, 52, 81, 104, 151, 185, 203}
	return appendIPv4(dst, firsts[h%uint64(len(firsts))], byte(h>>8), byte(h>>16), byte(h>>24|1))
}

func appendHex(dst []byte, h uint64, digits int) []byte {
	for i := digits - 1; i >= 0; i-- {
		dst = append(dst, hexLower[h>>(uint(i)*4)&0xF])
	}
	return dst
}

// appendUUID writes a version-4 style UUID from two hashes.
func appendUUID(dst []byte, a, b uint64) []byte {
	dst = appendHex(dst, a>>32, 8)
	dst = append(dst, '-')
	dst = appendHex(dst, a>>16&0xFFFF, 4)
	dst = append(dst, '-', '4')
	dst = appendHex(dst, a&0xFFF, 3)
	dst = append(dst, '-')
	dst = append(dst, "89ab"[b>>62])
	dst = appendHex(dst, b>>48&0xFFF, 3)
	dst = append(dst, '-')
	return appendHex(dst, b&0xFFFFFFFFFFFF, 12)
}
