package ocsf

// Enum values shared by every class (OCSF 1.3.0 dictionary.json).
const (
	activityOther = 99

	severityUnknown       = 0
	severityInformational = 1
	severityLow           = 2
	severityMedium        = 3
	severityHigh          = 4
	severityCritical      = 5
	severityOther         = 99

	statusSuccess = 1
	statusFailure = 2
	statusOther   = 99
)

// caption is one value of an OCSF enum.
type caption struct {
	id   int
	name string
}

// class is an OCSF event class: its uid and name, its category, and the
// captions of the activity_id and status_id values this package writes.
// Unknown (0) and Other (99) are common to all and not listed.
type class struct {
	uid          int
	name         string
	category     int
	categoryName string
	activities   []caption
	statuses     []caption // nil: the base event's Success and Failure
}

func (c *class) activity(id int) string { return find(c.activities, id) }

func (c *class) status(id int) string {
	if c.statuses != nil {
		return find(c.statuses, id)
	}
	return find([]caption{{statusSuccess, "Success"}, {statusFailure, "Failure"}}, id)
}

func find(list []caption, id int) string {
	for _, c := range list {
		if c.id == id {
			return c.name
		}
	}
	if id == 99 {
		return "Other"
	}
	return "Unknown"
}

func severityCaption(id int) string {
	switch id {
	case severityInformational:
		return "Informational"
	case severityLow:
		return "Low"
	case severityMedium:
		return "Medium"
	case severityHigh:
		return "High"
	case severityCritical:
		return "Critical"
	case 6:
		return "Fatal"
	case severityOther:
		return "Other"
	}
	return "Unknown"
}

// The classes of OCSF 1.3.0 this package writes (docs/ocsf.md says why
// each source gets its class).
func fileSystemActivity() class {
	return class{uid: 1001, name: "File System Activity", category: 1, categoryName: "System Activity",
		activities: []caption{{1, "Create"}, {2, "Read"}, {3, "Update"}, {4, "Delete"}}}
}

func detectionFinding() class {
	return class{uid: 2004, name: "Detection Finding", category: 2, categoryName: "Findings",
		activities: []caption{{1, "Create"}, {2, "Update"}, {3, "Close"}},
		statuses:   []caption{{1, "New"}, {2, "In Progress"}, {3, "Suppressed"}, {4, "Resolved"}}}
}

func authentication() class {
	return class{uid: 3002, name: "Authentication", category: 3, categoryName: "Identity & Access Management",
		activities: []caption{{1, "Logon"}, {2, "Logoff"}}}
}

func networkActivity() class {
	return class{uid: 4001, name: "Network Activity", category: 4, categoryName: "Network Activity",
		activities: []caption{{1, "Open"}, {2, "Close"}, {3, "Reset"}, {4, "Fail"}, {5, "Refuse"}, {6, "Traffic"}, {7, "Listen"}}}
}

func dnsActivity() class {
	return class{uid: 4003, name: "DNS Activity", category: 4, categoryName: "Network Activity",
		activities: []caption{{1, "Query"}, {2, "Response"}, {6, "Traffic"}}}
}

func inventoryInfo() class {
	return class{uid: 5001, name: "Device Inventory Info", category: 5, categoryName: "Discovery",
		activities: []caption{{1, "Log"}, {2, "Collect"}}}
}

func apiActivity() class {
	return class{uid: 6003, name: "API Activity", category: 6, categoryName: "Application Activity",
		activities: []caption{{1, "Create"}, {2, "Read"}, {3, "Update"}, {4, "Delete"}}}
}
