package record

// Stream names one stream of the collector: a source read for an account
// (CONTRACT C2, C7). Every stage keys its state by it: a poller pulls one
// stream, the pipeline orders and acknowledges each stream's pages, the
// checkpoint stores one state per stream and the sinks write per stream.
//
// The zero Stream names nothing. Account is the envelope account: a
// sub-account, "org" for organization-level data or "default" for the
// token's own account. A Stream is comparable and may be a map key.
//
// Tenant names the platform tenant the stream belongs to (a configured
// name of `tenants:`); "" is the one-tenant form (the top-level api
// section), printed and encoded exactly as before tenants existed. Two
// tenants' streams of the same source and account are different streams:
// every map keyed by Stream keeps them apart.
type Stream struct {
	Tenant, Source, Account string
}

// DefaultTenant is the name the one-tenant form (Tenant "") goes by where a
// tenant must be named: a metric label, a /state group.
const DefaultTenant = "default"

// String returns "source/account", the form of logs and errors, or
// "tenant:source/account" for a stream of a named tenant.
func (s Stream) String() string {
	if s.Tenant != "" {
		return s.Tenant + ":" + s.Source + "/" + s.Account
	}
	return s.Source + "/" + s.Account
}

// TenantName is the stream's tenant as it is shown: DefaultTenant for "".
func (s Stream) TenantName() string { return TenantLabel(s.Tenant) }

// TenantLabel is tenant as it is shown: DefaultTenant for "".
func TenantLabel(tenant string) string {
	if tenant == "" {
		return DefaultTenant
	}
	return tenant
}
