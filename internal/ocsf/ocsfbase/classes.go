package ocsfbase

// Enum values shared by every class (OCSF 1.3.0 dictionary.json):
// activity_id, severity_id and status_id.
const (
	ActivityOther = 99

	SeverityUnknown       = 0
	SeverityInformational = 1
	SeverityLow           = 2
	SeverityMedium        = 3
	SeverityHigh          = 4
	SeverityCritical      = 5
	SeverityOther         = 99

	StatusSuccess = 1
	StatusFailure = 2
	StatusOther   = 99
)

// caption is one value of an OCSF enum.
type caption struct {
	id   int
	name string
}

// Class is an OCSF event class: its uid and name, its category, and the
// captions of the activity_id and status_id values the mappings write.
// Unknown (0) and Other (99) are common to all and not listed.
type Class struct {
	UID          int    // class_uid
	Name         string // class_name
	Category     int    // category_uid
	CategoryName string // category_name
	activities   []caption
	statuses     []caption // nil: the base event's Success and Failure
}

// Activity returns the caption of activity_id id.
func (c *Class) Activity(id int) string { return find(c.activities, id) }

// Status returns the caption of status_id id.
func (c *Class) Status(id int) string {
	if c.statuses != nil {
		return find(c.statuses, id)
	}
	return find([]caption{{StatusSuccess, "Success"}, {StatusFailure, "Failure"}}, id)
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

// SeverityCaption returns the caption of severity_id id.
func SeverityCaption(id int) string {
	switch id {
	case SeverityInformational:
		return "Informational"
	case SeverityLow:
		return "Low"
	case SeverityMedium:
		return "Medium"
	case SeverityHigh:
		return "High"
	case SeverityCritical:
		return "Critical"
	case 6:
		return "Fatal"
	case SeverityOther:
		return "Other"
	}
	return "Unknown"
}

// The classes of OCSF 1.3.0 the mappings write (docs/ocsf.md says why
// each source gets its class).

// FileSystemActivity is class 1001.
func FileSystemActivity() Class {
	return Class{UID: 1001, Name: "File System Activity", Category: 1, CategoryName: "System Activity",
		activities: []caption{{1, "Create"}, {2, "Read"}, {3, "Update"}, {4, "Delete"}}}
}

// DetectionFinding is class 2004.
func DetectionFinding() Class {
	return Class{UID: 2004, Name: "Detection Finding", Category: 2, CategoryName: "Findings",
		activities: []caption{{1, "Create"}, {2, "Update"}, {3, "Close"}},
		statuses:   []caption{{1, "New"}, {2, "In Progress"}, {3, "Suppressed"}, {4, "Resolved"}}}
}

// Authentication is class 3002.
func Authentication() Class {
	return Class{UID: 3002, Name: "Authentication", Category: 3, CategoryName: "Identity & Access Management",
		activities: []caption{{1, "Logon"}, {2, "Logoff"}}}
}

// NetworkActivity is class 4001.
func NetworkActivity() Class {
	return Class{UID: 4001, Name: "Network Activity", Category: 4, CategoryName: "Network Activity",
		activities: []caption{{1, "Open"}, {2, "Close"}, {3, "Reset"}, {4, "Fail"}, {5, "Refuse"}, {6, "Traffic"}, {7, "Listen"}}}
}

// DNSActivity is class 4003.
func DNSActivity() Class {
	return Class{UID: 4003, Name: "DNS Activity", Category: 4, CategoryName: "Network Activity",
		activities: []caption{{1, "Query"}, {2, "Response"}, {6, "Traffic"}}}
}

// InventoryInfo is class 5001.
func InventoryInfo() Class {
	return Class{UID: 5001, Name: "Device Inventory Info", Category: 5, CategoryName: "Discovery",
		activities: []caption{{1, "Log"}, {2, "Collect"}}}
}

// APIActivity is class 6003.
func APIActivity() Class {
	return Class{UID: 6003, Name: "API Activity", Category: 6, CategoryName: "Application Activity",
		activities: []caption{{1, "Create"}, {2, "Read"}, {3, "Update"}, {4, "Delete"}}}
}
