package extract

import (
	"strings"
	"testing"
)

// TestPhotoFigure checks that a photo's caption is left out of the text,
// while a numbered figure's caption and a quoted testimonial's author
// stay.
func TestPhotoFigure(t *testing.T) {
	tests := []struct {
		name, figure, text string
		kept               bool
	}{
		{"photo caption", `<figure><img src="a.jpg"><figcaption>Above: the garden in winter light. Photograph by Jane Roe</figcaption></figure>`,
			"Photograph by Jane Roe", false},
		{"video caption", `<figure><div><video src="v.mp4"></video></div><figcaption>Clip shot on the river bank at dawn</figcaption></figure>`,
			"Clip shot on the river bank", false},
		{"numbered figure", `<figure><img src="a.png"><figcaption><em>Figure 2. Gas consumption per block averages one billion</em></figcaption></figure>`,
			"Gas consumption per block", true},
		{"testimonial", `<figure><blockquote>The retreat changed how I teach my classes forever</blockquote><figcaption>Abbie Y</figcaption></figure>`,
			"Abbie Y", true},
		{"figure without media", `<figure><figcaption>A figure that holds only its words here</figcaption></figure>`,
			"only its words", true},
		{"photo behind a link labelled", `<figure><a href="big.jpg"><img src="a.jpg"><i class="icon">Click to enlarge the picture</i></a><figcaption>The garden in winter light. Photo: Jane Roe</figcaption></figure>`,
			"Photo: Jane Roe", false},
		{"photo with an enlarge button", `<figure><div><picture><img src="a.jpg"></picture><button type="button"><span>Open the detail view</span></button></div><figcaption>The winner takes a short rest at the finish line. <small>(Photo: Jane Roe/Agency)</small></figcaption></figure>`,
			"Photo: Jane Roe/Agency", false},
		{"numbered figure with an enlarge button", `<figure><img src="a.png"><button>Open the detail view</button><figcaption>Figure 3. Gas consumption per block over ten years</figcaption></figure>`,
			"Gas consumption per block", true},
		{"photo and words outside its link", `<figure><a href="big.jpg"><img src="a.jpg"></a><p>Words of the figure beside the picture</p><figcaption>The garden in winter light, Jane Roe</figcaption></figure>`,
			"winter light, Jane Roe", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkKeptInGarden(t, tt.figure, tt.text, tt.kept) })
	}
}

// TestAltCaption checks that a caption written outside a figure, which
// repeats its image's alt text, is left out of the text, while a
// product's name under its picture, an item's linked title and a
// paragraph that goes on after the same words stay.
func TestAltCaption(t *testing.T) {
	alt := "The old orchard in bloom above the village, seen from the south."
	tests := []struct {
		name, block, text string
		kept              bool
	}{
		{"caption that repeats the alt", `<div class="pic"><a href="big.jpg"><div><img src="a.jpg" alt="` + alt + `"></div></a></div>` +
			`<div class="legend"><div class="content">` + alt + ` | © Jane Roe/Agency</div></div>`, "Jane Roe/Agency", false},
		{"caption beside the image", `<div class="imginline"><img src="a.jpg" alt="` + alt + `"><span>` + alt + ` Photo: Jane Roe</span></div>`,
			"Photo: Jane Roe", false},
		{"a name, not a sentence", `<div class="item"><img src="a.jpg" alt="Organic Orchard Apple Juice 1l"><div>Organic Orchard Apple Juice 1l with a note</div></div>`,
			"with a note", true},
		{"a linked title", `<div class="item"><img src="a.jpg" alt="` + alt + `"><h3><a href="/o">` + alt + ` More about it</a></h3></div>`,
			"More about it", true},
		{"a paragraph that goes on", `<div><img src="a.jpg" alt="` + alt + `"></div><p>` + alt + ` ` + prose("gamma", 3) + `</p>`,
			"gamma sentence number 2", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkKeptInGarden(t, tt.block, tt.text, tt.kept) })
	}
}

// checkKeptInGarden extracts a post with block between two paragraphs and
// checks that text is kept (or left out) as kept says, and that the post's
// paragraphs are kept either way.
func checkKeptInGarden(t *testing.T, block, text string, kept bool) {
	t.Helper()
	page := `<html><head><title>Garden</title></head><body><article><h1>Garden</h1><p>` + prose("alpha", 3) + `</p>` +
		block + `<p>` + prose("beta", 3) + `</p></article></body></html>`
	a, err := ExtractBytes([]byte(page), "https://garden.example/post", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(a.Text, "beta sentence number 2") {
		t.Fatalf("the article is missing:\n%s", a.Text)
	}
	if got := strings.Contains(a.Text, text); got != kept {
		t.Errorf("%q kept = %v, want %v:\n%s", text, got, kept, a.Text)
	}
}

// TestPhotoBlock checks that on a page that declares a post, a picture
// and its caption written without a figure element, in a block named for
// the picture or in a paragraph of a picture, a line break and a caption
// in italics, are left out like a photo figure, while a paragraph that
// goes on after its picture, a card of a picture and an item's text, a
// block whose text goes on past a caption, a picture under a linked
// title, and such a block on a page that does not declare a post stay.
func TestPhotoBlock(t *testing.T) {
	long := prose("gamma", 4)
	tests := []struct {
		name, head, block, text string
		kept                    bool
	}{
		{"image widget", postHead, `<div class="image_image-widget__LYZT4"><span class="image_target"><picture><img src="a.jpg"></picture></span>` +
			`<p><span>Pictured right is a reader from the estate, speaking to a novelist at the bookshop.</span></p><p>Image: Jane Roe</p></div>`,
			"speaking to a novelist", false},
		{"media block with a rights line", postHead, `<div class="media mediaA"><a href="/big.html"><div class="imageWrapper"><img src="a.jpg" alt="Hall"></div></a>` +
			`<div class="mediaInfo"><span class="mediaSubtitle">Many hands work in the hall to process the animals.</span><span class="mediaRights">Rights: Jane Roe</span></div></div>`,
			"Rights: Jane Roe", false},
		{"a card not named for its picture", postHead, `<div class="column-inner"><div class="image-wrapper"><img src="p.jpg" alt="pothos"></div>` +
			`<div class="content-container"><p><strong>Pothos</strong><br>One of the easiest houseplants to grow.</p></div></div>`,
			"easiest houseplants", true},
		{"text that goes on", postHead, `<div class="media"><img src="a.jpg"><p>` + long + `</p></div>`,
			"gamma sentence number 3", true},
		{"a picture under a linked title", postHead, `<div class="media"><img src="a.jpg"><h3><a href="/o">The other story about the harbour</a></h3></div>`,
			"other story about the harbour", true},
		{"a paragraph of a picture and its caption in italics", postHead, `<p><img src="victims.jpg" width="720" alt=""><br> <em>Victims from left: Kaylee, Ethan, Xana and Maddie</em></p>`,
			"Victims from left", false},
		{"a paragraph that goes on in roman type", postHead, `<p><img src="map.jpg" alt=""><br> <em>Map</em> of the valley shows the old road, which the council wants to open again next spring.</p>`,
			"which the council wants to open", true},
		{"a paragraph of text after a break", postHead, `<p><img src="map.jpg" alt=""><br>The map of the valley shows the old road, which the council wants to open again.</p>`,
			"which the council wants to open", true},
		{"a page that does not declare a post", "", `<div class="image-widget"><picture><img src="a.jpg"></picture><p>The harbour at dawn, with the fishing boats coming in.</p><p>Image: Jane Roe</p></div>`,
			"fishing boats coming in", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page := `<html><head><title>Garden</title>` + tt.head + `</head><body><article><h1>Garden</h1><p>` + prose("alpha", 3) + `</p>` +
				tt.block + `<p>` + prose("beta", 3) + `</p></article></body></html>`
			a, err := ExtractBytes([]byte(page), "https://garden.example/post", Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(a.Text, "beta sentence number 2") {
				t.Fatalf("the article is missing:\n%s", a.Text)
			}
			if got := strings.Contains(a.Text, tt.text); got != tt.kept {
				t.Errorf("%q kept = %v, want %v:\n%s", tt.text, got, tt.kept, a.Text)
			}
		})
	}
}
