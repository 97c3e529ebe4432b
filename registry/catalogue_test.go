package registry

import "encoding/json"

// catalogue is a realistic registry: swarms and agents of a travel,
// support and engineering platform, with overlapping vocabulary so that a
// ranker has to weigh terms rather than just find them.
func catalogue() []Entry {
	schema := json.RawMessage(`{"type":"object","properties":{"request":{"type":"string"}}}`)
	return []Entry{
		{ID: "flight-booking", Kind: KindSwarm, Description: "Searches airline flights and books seats on the chosen flight, handling fares and passenger details.",
			Capabilities: Capabilities([]string{"handoff_to_seat_picker"}, []string{"search_flights", "book_flight"}), Tags: []string{"travel", "air"}, Customizable: true, InputSchema: schema},
		{ID: "hotel-booking", Kind: KindSwarm, Description: "Finds hotels and reserves rooms for given dates, guests and budget.",
			Capabilities: Capabilities(nil, []string{"search_hotels", "reserve_room"}), Tags: []string{"travel", "lodging"}, Customizable: true},
		{ID: "ticketing", Kind: KindSwarm, Description: "Buys tickets for concerts, museums, theatre shows and sports events.",
			Capabilities: Capabilities(nil, []string{"find_events", "purchase_tickets"}), Tags: []string{"entertainment"}},
		{ID: "activity-booking", Kind: KindSwarm, Description: "Plans and books local activities such as tours, classes and excursions; hands off to ticketing for events.",
			Capabilities: Capabilities([]string{"handoff_to_ticketing"}, []string{"search_activities"}), Tags: []string{"travel", "leisure"}},
		{ID: "travel-planner", Kind: KindSwarm, Description: "Plans multi-city trips: builds an itinerary and coordinates flights, hotels and activities.",
			Capabilities: Capabilities([]string{"handoff_to_flight-booking", "handoff_to_hotel-booking", "handoff_to_activity-booking"}, []string{"build_itinerary"}), Tags: []string{"travel"}, Customizable: true},
		{ID: "car-rental", Kind: KindSwarm, Description: "Rents cars and vans at airports and city locations.",
			Capabilities: Capabilities(nil, []string{"search_vehicles", "reserve_vehicle"}), Tags: []string{"travel", "ground-transport"}},
		{ID: "support-triage", Kind: KindSwarm, Description: "Customer support triage: classifies an incoming customer request and routes it to billing, refunds or technical support.",
			Capabilities: Capabilities([]string{"handoff_to_billing-agent", "handoff_to_refunds", "handoff_to_tech-support"}, []string{"classify_request"}), Tags: []string{"support"}, Customizable: true},
		{ID: "refunds", Kind: KindSwarm, Description: "Processes refund requests for orders: checks eligibility against the policy and issues the money back.",
			Capabilities: Capabilities(nil, []string{"lookup_order", "issue_refund"}), Tags: []string{"support", "payments"}},
		{ID: "billing-agent", Kind: KindAgent, Description: "Answers questions about invoices, charges and payment methods.",
			Capabilities: Capabilities(nil, []string{"get_invoice", "update_payment_method"}), Tags: []string{"support", "payments"}},
		{ID: "tech-support", Kind: KindAgent, Description: "Troubleshoots technical problems with the product: login failures, crashes, error messages.",
			Capabilities: Capabilities(nil, []string{"search_knowledge_base", "open_ticket"}), Tags: []string{"support"}},
		{ID: "code-review", Kind: KindSwarm, Description: "Reviews pull requests for bugs, style and security issues and writes review comments.",
			Capabilities: Capabilities([]string{"handoff_to_security-auditor"}, []string{"fetch_diff", "post_comment"}), Tags: []string{"engineering"}},
		{ID: "security-auditor", Kind: KindAgent, Description: "Audits source code and dependencies for vulnerabilities.",
			Capabilities: Capabilities(nil, []string{"scan_dependencies"}), Tags: []string{"engineering", "security"}},
		{ID: "translator", Kind: KindAgent, Description: "Translates text between languages, keeping tone and formatting.",
			Capabilities: Capabilities(nil, []string{"detect_language"}), Tags: []string{"language"}},
		{ID: "event-planning", Kind: KindSwarm, Description: "Organises corporate events and team-building days: venue, catering and schedule.",
			Capabilities: Capabilities([]string{"handoff_to_venue-booking", "handoff_to_catering"}, []string{"draft_schedule"}), Tags: []string{"events", "corporate"}, Customizable: true},
		{ID: "venue-booking", Kind: KindSwarm, Description: "Finds and reserves venues and meeting rooms for a number of attendees.",
			Capabilities: Capabilities(nil, []string{"search_venues", "reserve_venue"}), Tags: []string{"events"}},
		{ID: "expense-tracker", Kind: KindAgent, Description: "Tracks spending against a budget and reports cost overruns.",
			Capabilities: Capabilities(nil, []string{"record_expense", "budget_report"}), Tags: []string{"finance"}},
	}
}
