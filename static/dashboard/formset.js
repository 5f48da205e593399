// "Add a row" for the formsets of the cluster editor: copy the row's <template>, numbering
// its fields with the formset's next index. Without JavaScript each part has one blank row.
(function () {
  "use strict";
  document.querySelectorAll("[data-add-row]").forEach(function (button) {
    var prefix = button.getAttribute("data-add-row");
    var total = document.getElementById("id_" + prefix + "-TOTAL_FORMS");
    var template = document.getElementById("empty-" + prefix);
    var body = document.querySelector('table[data-formset="' + prefix + '"] tbody');
    if (!total || !template || !body) return;
    button.hidden = false;
    button.addEventListener("click", function () {
      var n = parseInt(total.value, 10);
      var html = template.innerHTML.replace(/__prefix__/g, String(n));
      body.insertAdjacentHTML("beforeend", html);
      total.value = String(n + 1);
    });
  });
})();
